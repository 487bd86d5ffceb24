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
