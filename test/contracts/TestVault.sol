// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";

/// Plain OpenZeppelin ERC-4626 vault over one ERC-20, the shape of the opportunities the API deposits into.
contract TestVault is ERC4626 {
    constructor(IERC20 asset_, string memory name_, string memory symbol_) ERC20(name_, symbol_) ERC4626(asset_) {}
}

/// The same vault with a decimals offset (as OpenZeppelin recommends against inflation attacks): its shares have
/// 12 more decimals than its asset, as MetaMorpho's 18-decimal shares over 6-decimal USDC do.
contract TestOffsetVault is ERC4626 {
    constructor(IERC20 asset_, string memory name_, string memory symbol_) ERC20(name_, symbol_) ERC4626(asset_) {}

    function _decimalsOffset() internal pure override returns (uint8) {
        return 12;
    }
}

/// A vault with the limits real ones have (a deposit cap, a pause, a redeem limit), which it reports through
/// ERC-4626's `maxDeposit` and `maxRedeem` and enforces as OpenZeppelin does: a deposit or redeem above them reverts.
contract TestLimitedVault is ERC4626 {
    uint256 public cap = type(uint256).max;
    uint256 public redeemLimit = type(uint256).max;
    bool public paused;

    constructor(IERC20 asset_) ERC20("Limited Vault Share", "lvtUSD") ERC4626(asset_) {}

    function setLimits(uint256 cap_, uint256 redeemLimit_, bool paused_) external {
        cap = cap_;
        redeemLimit = redeemLimit_;
        paused = paused_;
    }

    function maxDeposit(address) public view override returns (uint256) {
        if (paused) return 0;
        uint256 held = totalAssets();
        return held >= cap ? 0 : cap - held;
    }

    function maxRedeem(address owner) public view override returns (uint256) {
        if (paused) return 0;
        uint256 shares = balanceOf(owner);
        return shares < redeemLimit ? shares : redeemLimit;
    }
}

/// Where a markets vault keeps what it lends: it holds the asset for the vault and hands it back on the vault's word.
contract TestMarket {
    address public immutable vault;
    IERC20 public immutable asset;

    constructor(IERC20 asset_) {
        vault = msg.sender;
        asset = asset_;
    }

    function pull(address to, uint256 amount) external {
        require(msg.sender == vault, "only the vault");
        asset.transfer(to, amount);
    }
}

/// A vault shaped like MetaMorpho or a multi-strategy Yearn v3 vault: a deposit fills its markets in order up to a
/// cap each, a withdrawal pulls back from them in order, so a step's gas grows with how many markets its amount
/// reaches.
contract TestMarketsVault is ERC4626 {
    TestMarket[] public markets;
    uint256 public immutable marketCap;

    constructor(IERC20 asset_, uint256 count, uint256 cap) ERC20("Markets Vault Share", "mvUSD") ERC4626(asset_) {
        for (uint256 i; i < count; ++i) markets.push(new TestMarket(asset_));
        marketCap = cap;
    }

    function totalAssets() public view override returns (uint256 total) {
        IERC20 a = IERC20(asset());
        total = a.balanceOf(address(this));
        for (uint256 i; i < markets.length; ++i) total += a.balanceOf(address(markets[i]));
    }

    function _deposit(address caller, address receiver, uint256 assets, uint256 shares) internal override {
        super._deposit(caller, receiver, assets, shares);
        IERC20 a = IERC20(asset());
        uint256 left = assets;
        for (uint256 i; i < markets.length && left > 0; ++i) {
            uint256 held = a.balanceOf(address(markets[i]));
            if (held >= marketCap) continue;
            uint256 put = marketCap - held < left ? marketCap - held : left;
            a.transfer(address(markets[i]), put);
            left -= put;
        }
    }

    function _withdraw(address caller, address receiver, address owner, uint256 assets, uint256 shares) internal override {
        IERC20 a = IERC20(asset());
        uint256 idle = a.balanceOf(address(this));
        for (uint256 i; i < markets.length && idle < assets; ++i) {
            uint256 held = a.balanceOf(address(markets[i]));
            uint256 take = assets - idle < held ? assets - idle : held;
            if (take == 0) continue;
            markets[i].pull(address(this), take);
            idle += take;
        }
        super._withdraw(caller, receiver, owner, assets, shares);
    }
}
